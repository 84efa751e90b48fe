package main

import (
	"strings"

	"github.com/batonhq/baton/internal/redact"
)

// redactedEndpoints is endpoints for a message: no URL password in it.
func redactedEndpoints(endpoints []string) string {
	return redact.URLPasswords(strings.Join(endpoints, ","))
}

// redactedError is an error whose message shows no URL password;
// errors.Is and errors.As still see the error it wraps.
type redactedError struct{ err error }

func (e redactedError) Error() string { return redact.URLPasswords(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// redactError wraps err so that its message shows no URL password.
func redactError(err error) error {
	if err == nil || redact.URLPasswords(err.Error()) == err.Error() {
		return err
	}
	return redactedError{err}
}
