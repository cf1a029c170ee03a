#!/bin/sh
echo "npybridge: coverage tools are not available offline" >&2
exit 1
