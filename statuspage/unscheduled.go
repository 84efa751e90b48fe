package statuspage

// nextText is the job's next tick as the text table shows it; for a job
// that no replica schedules, since when; for one that runs no more, how it
// ended.
func nextText(j Job) string {
	if !j.NotScheduledSince.IsZero() {
		return "not scheduled by anyone since " + local(j.NotScheduledSince)
	}
	if e := j.EndedAs(); e != "" {
		return e
	}
	return local(j.Next)
}
