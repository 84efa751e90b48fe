package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/redact"
)

// urlCredentials is the user information an endpoint carried: everything
// between its scheme (if any) and its last "@".
type urlCredentials struct {
	user, password string
}

// parseUserinfo reads "user:password", each part percent-decoded where it
// decodes (a literal "%" is kept as it is).
func parseUserinfo(userinfo string) urlCredentials {
	user, password, _ := strings.Cut(userinfo, ":")
	dec := func(s string) string {
		if d, err := url.PathUnescape(s); err == nil {
			return d
		}
		return s
	}
	return urlCredentials{user: dec(user), password: dec(password)}
}

// takeURLCredentials takes the user information off every endpoint of c
// and uses it as c's user and password: etcd's client sends no
// credentials from a URL, and a parser's error would quote them. A user
// given by --username or BATON_ETCD_USERNAME too must be the same, and so
// must every endpoint's. The error names the endpoint by its position and
// host, never its password.
func takeURLCredentials(c *election.Connection) error {
	var found *urlCredentials
	eps := make([]string, len(c.Endpoints))
	for i, ep := range c.Endpoints {
		bare, userinfo := redact.CutUserinfo(ep)
		eps[i] = bare
		if userinfo == "" {
			continue
		}
		cr := parseUserinfo(userinfo)
		switch {
		case found == nil:
			found = &cr
		case *found != cr:
			return fmt.Errorf("etcd endpoints: %s carries other credentials than an endpoint before it; give one user and password, best with --username and --password (BATON_ETCD_USERNAME, BATON_ETCD_PASSWORD)", shownEndpoint(bare, cr.user))
		}
	}
	c.Endpoints = eps
	if found == nil {
		return nil
	}
	if c.Username == "" && c.Password == "" {
		c.Username, c.Password = found.user, found.password
		return nil
	}
	if c.Username != found.user || c.Password != found.password {
		return fmt.Errorf("etcd endpoints: the user and password in an endpoint URL (user %q) are not those of --username and --password (BATON_ETCD_USERNAME, BATON_ETCD_PASSWORD, user %q): give them one way", found.user, c.Username)
	}
	return nil
}

// shownEndpoint is an endpoint for a message, with its user and no password.
func shownEndpoint(bare, user string) string {
	scheme, rest, ok := strings.Cut(bare, "://")
	if !ok {
		return user + ":xxxxx@" + bare
	}
	return scheme + "://" + user + ":xxxxx@" + rest
}
