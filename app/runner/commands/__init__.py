"""The `rewake` commands of one developer: `run`, `hook`, `ls`, `show`, `auto-resume`, `doctor`,
`setup`."""
