#!/bin/sh
tar czf /var/backups/notes.tgz "$HOME/notes"
