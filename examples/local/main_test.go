package main

import "testing"

// TestDemonstration runs the README's demonstration end to end: it fails if
// a tick runs twice or the replicas stop ticking.
func TestDemonstration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds baton and runs four processes for about 20 seconds")
	}
	sum, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if sum.duplicated != 0 || sum.missed != sum.crashMissed || sum.ran < 12 {
		t.Fatalf("%+v: want no tick twice, none missed but in the crash's gap, and at least 12 run", sum)
	}
}
