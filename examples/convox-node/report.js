// The job the crontab runs every five minutes. baton starts it once per tick
// for the whole app, in whichever process leads, and tells it which tick it
// runs for, so the report can be named after the tick rather than the clock.
"use strict";

const { BATON_JOB, BATON_TICK, BATON_ID, BATON_FENCE } = process.env;

// A real report would be written somewhere keyed by BATON_TICK, passing
// BATON_FENCE along so that a store which checks it refuses a late write
// from a process that has since lost its leadership.
if (!BATON_TICK) {
  console.log("report: run by hand, outside baton; no tick");
} else {
  console.log(`report for ${BATON_TICK}: job ${BATON_JOB}, process ${BATON_ID}, fence ${BATON_FENCE}`);
}
