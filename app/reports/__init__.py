"""What hosts report about a session's failures, and how a failure and its mark are put in
words: the report, its body and fields, banners, evidence, the session JSON read back."""
