"""Running one CLI attempt under supervision: the attempt loop, classifying its end, waiting for
the resume, the session lock."""
