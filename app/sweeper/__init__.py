"""The sweeper: fires each armed mark once, when due, paced per account (docs/design.md#sweeper)."""
