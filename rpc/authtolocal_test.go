package rpc

import (
	"strings"
	"testing"
)

// TestAuthToLocal: Hadoop's rules, worked by hand (the cases Hadoop's own
// documentation gives, and the refusals).
func TestAuthToLocal(t *testing.T) {
	rules := `
		RULE:[1:$1@$0](.*@CORP\.EXAMPLE\.COM)s/@.*//
		RULE:[2:$1@$0](nn@EXAMPLE\.COM)s/.*/hdfs/
		RULE:[2:$1/$2@$0](rm/.*@EXAMPLE\.COM)s/.*/yarn/
		RULE:[1:$1](Admin.*)s/A/a/g/L
		DEFAULT`
	a, err := ParseAuthToLocal(rules, "EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, realm, want, err string }{
		{"alice", "EXAMPLE.COM", "alice", ""},               // DEFAULT
		{"alice/admin", "EXAMPLE.COM", "alice", ""},         // DEFAULT, two components
		{"bob", "CORP.EXAMPLE.COM", "bob", ""},              // the first rule: another realm's users
		{"nn/host1.example.com", "EXAMPLE.COM", "hdfs", ""}, // service principals to service users
		{"rm/host2.example.com", "EXAMPLE.COM", "yarn", ""},
		{"AdminJoe", "OTHER.ORG", "adminjoe", ""}, // s///g then /L
		{"carol", "OTHER.ORG", "", "No rules applied to carol@OTHER.ORG"},
		{"a/b/c", "EXAMPLE.COM", "", "No rules applied"},
	} {
		got, err := a.ShortName(tc.name, tc.realm)
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s@%s: %q, %v; want %q, %q", tc.name, tc.realm, got, err, tc.want, tc.err)
		}
	}
	nonSimple, err := ParseAuthToLocal(`RULE:[1:$1@$0](.*)`, "EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nonSimple.ShortName("alice", "EXAMPLE.COM"); err == nil || !strings.Contains(err.Error(), "Non-simple name alice@EXAMPLE.COM") {
		t.Errorf("a rule leaving the realm on: %v", err)
	}
	for _, bad := range []string{"RULE:[3:$1]", "RULE:[1:$1](a(b)", "RULE:1:$1", "", "MIT"} {
		if _, err := ParseAuthToLocal(bad, "EXAMPLE.COM"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzAuthToLocal(f *testing.F) {
	f.Add(`RULE:[2:$1@$0](rm/.*@EXAMPLE\.COM)s/.*/yarn/ DEFAULT`, "rm/host", "EXAMPLE.COM")
	f.Add(`RULE:[1:$1](A.*)s/A/a/g/L`, "Admin", "X")
	f.Fuzz(func(t *testing.T, rules, name, realm string) {
		a, err := ParseAuthToLocal(rules, "EXAMPLE.COM")
		if err != nil {
			return
		}
		if s, err := a.ShortName(name, realm); err == nil && (s == "" || strings.ContainsAny(s, "/@")) {
			t.Fatalf("%q mapped %s@%s to the non-simple %q", rules, name, realm, s)
		}
	})
}
