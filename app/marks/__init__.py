"""Auto-resume marks: the lifecycle as data, its rules, its one repository, and the changes the
API and the sweeper make."""
