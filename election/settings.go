package election

import (
	"fmt"
	"os"
	"regexp"
	"time"
)

// Settings are resolved alike by everything built on this package, which
// takes them from here, so a prefix, an identity or a TTL means the same
// thing wherever it is read.
type Settings struct {
	// Prefix is the key prefix P: WithPrefix, else BATON_PREFIX, else
	// DefaultPrefix.
	Prefix string
	// Identity names this instance to others: WithIdentity, else BATON_ID,
	// else DefaultIdentity().
	Identity string
	// TTL is the lease TTL: WithTTL, else BATON_TTL, else DefaultTTL.
	TTL time.Duration
}

// Resolve returns the settings that opts give, with the environment and the
// defaults for what they leave out, and validates them: an error names the
// setting and the variable or option it came from. It does not touch etcd.
func Resolve(opts ...Option) (Settings, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return Settings{}, err
	}
	return Settings{Prefix: o.prefix, Identity: o.identity, TTL: o.ttl}, nil
}

// DefaultIdentity is an instance's identity when neither WithIdentity nor
// BATON_ID gives one: the host name (HOSTNAME; under Convox and Kubernetes,
// the pod name that `convox ps` shows) and the process id, "web-6499468bf8-8wkjj/1",
// so that two processes of one host or pod never share an identity.
func DefaultIdentity() string {
	host := os.Getenv("HOSTNAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	if host == "" {
		host = "unknown"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckName reports whether name may name an election, a lock, or anything
// else kept as one segment of a key: 1 to 200 bytes of ASCII
// letters, digits, '.', '_' and '-', starting with a letter or a digit. The
// error names what (for example "job") and the name.
func CheckName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty", what)
	case len(name) > 200:
		return fmt.Errorf("%s name %.20q...: longer than 200 bytes", what, name)
	case !namePattern.MatchString(name):
		return fmt.Errorf("%s name %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", what, name)
	}
	return nil
}
