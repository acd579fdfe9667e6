"""``python -m pyplugins``: the ``pyplugins`` command (:func:`pyplugins.cli.main`) without the script."""

from pyplugins.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
