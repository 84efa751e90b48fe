package statuspage

// nextText is the job's next tick as the text table shows it, or, for a job
// that no replica schedules, since when.
func nextText(j Job) string {
	if !j.NotScheduledSince.IsZero() {
		return "not scheduled by anyone since " + local(j.NotScheduledSince)
	}
	return local(j.Next)
}
