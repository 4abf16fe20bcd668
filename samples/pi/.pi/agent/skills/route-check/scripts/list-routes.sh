#!/bin/sh
grep -o '"/[a-z]*"' routes.py
