package cronx

// For the benchmarks of cronx_test, which import packages built on cronx.
var (
	BenchTenThousandJobs = benchTenThousandJobs
	BenchHeapPerJob      = benchHeapPerJob
)
