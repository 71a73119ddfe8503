"""Who may act and from where: bearer auth, where a browser's sign-in cookie counts, and the
headers every page carries."""
