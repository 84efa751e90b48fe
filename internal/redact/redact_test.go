package redact

import "testing"

func TestURLPasswords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://app:pw@etcd:2379", "http://app:xxxxx@etcd:2379"},
		{`parse "http://app:s3cr3t@127.0.0.1:x": invalid port`, `parse "http://app:xxxxx@127.0.0.1:x": invalid port`},
		{"etcd http://a:1@h:1,https://b:p%40ss@h:2 unreachable", "etcd http://a:xxxxx@h:1,https://b:xxxxx@h:2 unreachable"},
		{"http://app@etcd:2379 and http://etcd:2379/a:b", "http://app@etcd:2379 and http://etcd:2379/a:b"},
		{"http://app:pa/ss#x?y@h:1 x", "http://app:xxxxx@h:1 x"},
		{`"http://app:p@ss@h:1"`, `"http://app:xxxxx@h:1"`},
		{"no url: a:b@c", "no url: a:b@c"},
	} {
		if got := URLPasswords(tc.in); got != tc.want {
			t.Errorf("URLPasswords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://etcd:2379", "http://etcd:2379"},
		{"etcd:2379", "etcd:2379"},
		{"http://app:pw@etcd:2379", "http://app:xxxxx@etcd:2379"},
		{"app:hunter2@127.0.0.1:2379", "app:xxxxx@127.0.0.1:2379"},
		{"http://app:pa/ss123@127.0.0.1:1", "http://app:xxxxx@127.0.0.1:1"},
		{"http://app:p@ss@h:1", "http://app:xxxxx@h:1"},
		{"http://app:pa ss@h:1", "http://app:xxxxx@h:1"},
		{"http://app@h:1", "http://app@h:1"},
	} {
		if got := Endpoint(tc.in); got != tc.want {
			t.Errorf("Endpoint(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
