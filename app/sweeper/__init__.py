"""The sweeper: fires each armed mark once, when due, paced per account (DESIGN.md section 3)."""
