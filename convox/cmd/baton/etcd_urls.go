package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
)

// etcdURLs parses a URL flag as etcd would, with an error naming the flag.
func etcdURLs(flag string, values []string) ([]url.URL, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("%s is empty", flag)
	}
	us, err := types.NewURLs(values)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", flag, strings.Join(values, ","), err)
	}
	return us, nil
}

// checkAdvertised rejects an address others cannot dial.
func checkAdvertised(flag string, us []url.URL) error {
	for _, u := range us {
		if unspecified(u) {
			return fmt.Errorf("%s %q: %s is not an address others can reach; give this host's name", flag, u.String(), u.Hostname())
		}
	}
	return nil
}

// advertised is what to advertise for listen URLs by default: the URLs
// themselves, with this host's name in place of 0.0.0.0 or [::].
func advertised(listen []url.URL) []url.URL {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	out := make([]url.URL, len(listen))
	for i, u := range listen {
		out[i] = u
		if unspecified(u) {
			out[i].Host = net.JoinHostPort(host, u.Port())
		}
	}
	return out
}

func unspecified(u url.URL) bool {
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		return false
	}
	h := u.Hostname()
	if h == "" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

// parseInitialCluster reads NAME=URL,NAME=URL,... (a name may repeat, for a
// member with several peer URLs).
func parseInitialCluster(s string) (types.URLsMap, error) {
	urls := map[string][]string{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		name, u, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("--initial-cluster %q: entry %q is not NAME=PEER-URL", s, entry)
		}
		if err := checkMemberName("--initial-cluster "+strconv.Quote(s)+": entry "+strconv.Quote(entry), name); err != nil {
			return nil, err
		}
		urls[name] = append(urls[name], u)
	}
	m := types.URLsMap{}
	for name, us := range urls {
		parsed, err := types.NewURLs(us)
		if err != nil {
			return nil, fmt.Errorf("--initial-cluster %q: member %q: %v", s, name, err)
		}
		m[name] = parsed
	}
	return m, nil
}

func checkMemberName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: empty member name", what)
	case strings.ContainsAny(name, "=, \t"):
		return fmt.Errorf("%s: member name %q has '=', ',' or a space", what, name)
	}
	return nil
}

// compactionRetention checks a retention as etcd's periodic compactor reads
// it: a duration, or a bare number of hours.
func compactionRetention(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return s, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return s, nil
	}
	return "", fmt.Errorf("--auto-compaction-retention %q: want a duration such as \"1h\", or 0", s)
}

// checkClientTLS checks --cert-file and --key-file against the client URLs:
// with them every client URL is https, without them none is.
func checkClientTLS(cert, key string, listen, advertise []url.URL) error {
	switch {
	case cert == "" && key == "":
		for _, u := range append(listen, advertise...) {
			if u.Scheme == "https" || u.Scheme == "unixs" {
				return fmt.Errorf("client URL %q is https but --cert-file and --key-file are not given", u.String())
			}
		}
		return nil
	case cert == "":
		return fmt.Errorf("--key-file %q given without --cert-file", key)
	case key == "":
		return fmt.Errorf("--cert-file %q given without --key-file", cert)
	}
	if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
		return fmt.Errorf("--cert-file %q, --key-file %q: %w", cert, key, err)
	}
	for _, u := range append(listen, advertise...) {
		if u.Scheme != "https" && u.Scheme != "unixs" {
			return fmt.Errorf("client URL %q: with --cert-file, client URLs are https://", u.String())
		}
	}
	return nil
}

// certValidity says what is wrong with the dates of the certificate in
// file, read already by checkClientTLS: expired or not yet valid at now,
// which every client refuses. "" when they are fine or there is none.
func certValidity(file string, now time.Time) string {
	if file == "" {
		return ""
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return ""
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return ""
	}
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Sprintf("--cert-file %s expired at %s: every client refuses it (x509: certificate has expired); renew it", file, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Sprintf("--cert-file %s is not valid before %s: every client refuses it until then (is this machine's clock right?)", file, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return ""
}
