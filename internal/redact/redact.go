// Package redact hides secrets that configuration may carry in text meant
// for logs and errors.
package redact

import "regexp"

// userPassword matches the password of a URL's user information,
// "scheme://user:password@".
var userPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/@:\s"]*):[^/@\s"]*@`)

// URLPasswords replaces the password of every URL in s with "xxxxx", as
// url.URL.Redacted does, also in a URL that does not parse: an endpoint
// such as http://app:secret@etcd:2379 is then never echoed.
func URLPasswords(s string) string {
	return userPassword.ReplaceAllString(s, "${1}:xxxxx@")
}
