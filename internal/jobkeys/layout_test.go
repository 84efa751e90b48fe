package jobkeys

import "testing"

// TestKeysReadBackAsTheirJob: a key the layout names is read back as its
// job's, with the tick or request it names; the scheduler's own keys and
// strays are of no job.
func TestKeysReadBackAsTheirJob(t *testing.T) {
	l := New("/baton", "app")
	if job, leaf, ok := l.JobKey(l.Last("nightly")); !ok || job != "nightly" || leaf != "last" {
		t.Errorf("JobKey(last) = %q %q %v", job, leaf, ok)
	}
	if seq, ok := l.BufferSeq(l.BufferEntry("nightly", 42)); !ok || seq != 42 {
		t.Errorf("BufferSeq(BufferEntry(42)) = %d %v", seq, ok)
	}
	if got := l.TriggerJob(l.Trigger("nightly", "id")); got != "nightly" {
		t.Errorf("TriggerJob = %q", got)
	}
	if got := l.BackfillJob(l.Backfill("nightly", "id")); got != "nightly" {
		t.Errorf("BackfillJob = %q", got)
	}
	for _, key := range []string{l.RosterSum(), l.Trigger("nightly", "id"), l.TickRecord(1, "r"), l.Dir() + "bad name/last"} {
		if job, _, ok := l.JobKey(key); ok {
			t.Errorf("JobKey(%s) = %q: a key of no job read as a job's", key, job)
		}
	}
	if dir, why := l.Stray(l.Dir() + "bad name/last"); dir != l.Dir()+"bad name/" || why == "" {
		t.Errorf("Stray(bad name) = %q %q, want its directory and why", dir, why)
	}
	if _, why := l.Stray(l.RosterSum()); why != "" {
		t.Errorf("Stray(roster) = %q: the scheduler's own key taken for a stray", why)
	}
}
