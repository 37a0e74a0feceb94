"""Date formats of the admin and the pages (`FORMAT_MODULE_PATH`)."""
