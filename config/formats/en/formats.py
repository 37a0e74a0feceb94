"""Times to the second, as the run pages' notes and the run list give them: two runs a minute
apart, or a run's start and end, must not read alike."""

DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"
