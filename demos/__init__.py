"""Runnable end-to-end demos; each checks its own result and exits non-zero when it is wrong."""
