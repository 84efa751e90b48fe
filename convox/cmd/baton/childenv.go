package main

import (
	"os"
	"slices"
	"strings"

	"github.com/batonhq/baton/convox"
)

// ownVariables configure this baton process's own endpoints, not a baton
// its command may start: a nested `baton run` given the same BATON_HTTP
// would fail to bind it.
var ownVariables = []string{"BATON_HTTP"}

// commandEnv is the environment every command starts from: baton's own
// less ownVariables, with the connection baton uses, flags included, so
// that a nested baton reaches the same etcd under the same prefix as the
// same user.
func commandEnv(cfg convox.Config) []string {
	c := cfg.Connection
	conn := [][2]string{
		{"BATON_ETCD_ENDPOINTS", strings.Join(c.Endpoints, ",")},
		{"BATON_PREFIX", cfg.Prefix},
		{"BATON_ETCD_USERNAME", c.Username},
		{"BATON_ETCD_PASSWORD", c.Password},
		{"BATON_ETCD_CA", c.CAFile},
		{"BATON_ETCD_CERT", c.CertFile},
		{"BATON_ETCD_KEY", c.KeyFile},
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(ownVariables, k) || slices.ContainsFunc(conn, func(p [2]string) bool { return p[0] == k }) {
			continue
		}
		env = append(env, kv)
	}
	for _, p := range conn {
		if p[1] != "" {
			env = append(env, p[0]+"="+p[1])
		}
	}
	return env
}
