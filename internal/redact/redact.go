// Package redact hides secrets that configuration may carry in text meant
// for logs and errors.
package redact

import (
	"regexp"
	"strings"
)

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

// CutUserinfo splits ep, an endpoint, into the endpoint without its user
// information and that user information ("" when it has none). The user
// information ends at the endpoint's last "@", whatever it holds: a
// password with a "/", "#", "?", "@" or a space makes no URL that parses,
// and must be taken off before anything parses the endpoint, since a
// parser's error quotes what it could not parse.
func CutUserinfo(ep string) (bare, userinfo string) {
	scheme, rest := "", ep
	if i := strings.Index(ep, "://"); i >= 0 {
		scheme, rest = ep[:i+3], ep[i+3:]
	}
	at := strings.LastIndex(rest, "@")
	if at <= 0 {
		return ep, ""
	}
	return scheme + rest[at+1:], rest[:at]
}

// Endpoint is ep as it may be shown: with a password in its user
// information replaced by "xxxxx", whatever the endpoint's shape (a URL,
// or user:password@host:port with no scheme).
func Endpoint(ep string) string {
	bare, userinfo := CutUserinfo(ep)
	if userinfo == "" {
		return ep
	}
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if hasPassword {
		user += ":xxxxx"
	}
	scheme, host := "", bare
	if i := strings.Index(bare, "://"); i >= 0 {
		scheme, host = bare[:i+3], bare[i+3:]
	}
	return scheme + user + "@" + host
}
