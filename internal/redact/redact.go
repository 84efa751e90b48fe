// Package redact hides secrets that configuration may carry in text meant
// for logs and errors.
package redact

import "regexp"

// userPassword matches the password of a URL's user information,
// "scheme://user:password@", up to the last "@" before white space, a
// quote or a comma (which ends an endpoint of a list): a password with a
// "/", "#", "?" or "@" makes a URL that does not parse, and is a password
// all the same.
var userPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/@:\s"]*):[^\s",]*@`)

// URLPasswords replaces the password of every URL in s with "xxxxx", as
// url.URL.Redacted does, also in a URL that does not parse: an endpoint
// such as http://app:secret@etcd:2379 or http://app:se/cret@etcd:2379 is
// then never echoed. A parser's error may quote a piece of a malformed
// URL apart from the URL (`invalid port ":se"`), which no pattern can
// know for a password: text about a malformed URL is best made from the
// URL without its user information.
func URLPasswords(s string) string {
	return userPassword.ReplaceAllString(s, "${1}:xxxxx@")
}
