#!/bin/bash
# The web server and baton's cron, side by side in one container. When either
# exits the other is stopped and the container exits, so Convox restarts it
# and the crash shows in `convox ps` and `convox logs`; a cron that died
# quietly beside a healthy web server would go unnoticed. On SIGTERM both get
# it: the server finishes its requests, and baton resigns at once, so another
# process runs the next tick, and waits for a running job (--grace, 25s).
set -u

node server.js &
web=$!
baton crontab crontab &
cron=$!

trap 'kill -TERM "$web" "$cron" 2>/dev/null' TERM INT
wait -n "$web" "$cron"
status=$?
kill -TERM "$web" "$cron" 2>/dev/null
wait
exit "$status"
