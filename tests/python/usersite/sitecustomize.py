"""A program's own sitecustomize (t-api-framework-counters): the counters
helper must still run it."""
import sys

sys.stdout.write("user sitecustomize ran\n")
