package statuspage

// LastStarted is the latest release whose start ran the job
// (cronx.WithRunAtStart, @start); empty when none did.
func (j Job) LastStarted() string {
	if len(j.Started) == 0 {
		return ""
	}
	return j.Started[len(j.Started)-1]
}

// specText is the job's spec as the text table shows it, with the release
// whose start ran it last.
func specText(j Job) string {
	if r := j.LastStarted(); r != "" {
		return j.Spec + " (ran at start of " + r + ")"
	}
	return j.Spec
}
