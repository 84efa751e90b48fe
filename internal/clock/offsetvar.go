package clock

// OffsetVar names the variable through which the fault-injection harness
// gives a replica a skewed clock. Only a binary built with the "faults" tag
// reads it (process_faults.go); a release build ignores it.
const OffsetVar = "BATON_FAULTS_CLOCK_OFFSET"
