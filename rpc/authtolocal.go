package rpc

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/loomrm/loom/internal/hadoopconf"
)

// KeyAuthToLocal holds the rules that map Kerberos principals to local
// user names, as Hadoop's KerberosName reads them.
const KeyAuthToLocal = "hadoop.security.auth_to_local"

// AuthToLocal maps principals to short names by Hadoop's rules, tried in
// order, the first that applies winning:
//
//	DEFAULT                               a principal of the default realm: its first component
//	RULE:[n:fmt](match)s/pat/repl/[g][/L] a principal of n components, formatted by fmt
//	                                      ($0 the realm, $1 and $2 the components), if it
//	                                      matches (match), with the substitution applied
//	                                      (every occurrence with g), lowercased with /L
//
// A principal no rule applies to is refused, as is a rule's result that is
// not a simple name (it holds / or @).
type AuthToLocal struct {
	realm string
	rules []authRule
}

type authRule struct {
	isDefault    bool
	n            int
	format       string
	match        *regexp.Regexp
	from         *regexp.Regexp
	to           string
	global, lowr bool
}

var ruleRE = regexp.MustCompile(`^RULE:\[(\d+):([^\]]*)\](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?(/L)?$`)

// ParseAuthToLocal reads rules for the default realm.
func ParseAuthToLocal(rules, defaultRealm string) (*AuthToLocal, error) {
	a := &AuthToLocal{realm: defaultRealm}
	for _, f := range strings.Fields(rules) {
		if f == "DEFAULT" {
			a.rules = append(a.rules, authRule{isDefault: true})
			continue
		}
		m := ruleRE.FindStringSubmatch(f)
		if m == nil {
			return nil, fmt.Errorf("Invalid rule: %s", f)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > 2 {
			return nil, fmt.Errorf("Invalid rule: %s: a principal has 1 or 2 components", f)
		}
		r := authRule{n: n, format: m[2], to: m[7], global: m[8] == "g", lowr: m[9] == "/L"}
		if m[3] != "" {
			if r.match, err = regexp.Compile("^(?:" + m[4] + ")$"); err != nil {
				return nil, fmt.Errorf("Invalid rule: %s: %v", f, err)
			}
		}
		if m[5] != "" {
			if r.from, err = regexp.Compile(m[6]); err != nil {
				return nil, fmt.Errorf("Invalid rule: %s: %v", f, err)
			}
			// Java's $1 is Go's ${1}.
			r.to = regexp.MustCompile(`\$(\d)`).ReplaceAllString(r.to, "$${$1}")
		}
		a.rules = append(a.rules, r)
	}
	if len(a.rules) == 0 {
		return nil, errors.New("no rules (the default is DEFAULT)")
	}
	return a, nil
}

// AuthToLocalFromConf reads hadoop.security.auth_to_local (DEFAULT when
// unset) for the default realm.
func AuthToLocalFromConf(c *hadoopconf.Conf, defaultRealm string) (*AuthToLocal, error) {
	rules := "DEFAULT"
	if _, set := c.Raw(KeyAuthToLocal); set {
		v, err := c.String(KeyAuthToLocal)
		if err != nil {
			return nil, err
		}
		rules = v
	}
	a, err := ParseAuthToLocal(rules, defaultRealm)
	if err != nil {
		return nil, c.Errorf(KeyAuthToLocal, "%v", err)
	}
	return a, nil
}

// ShortName maps name (components joined by /) of realm to a local user.
func (a *AuthToLocal) ShortName(name, realm string) (string, error) {
	comps := strings.Split(name, "/")
	for _, r := range a.rules {
		if r.isDefault {
			if realm != a.realm || len(comps) > 2 {
				continue
			}
			if s := comps[0]; s == "" || strings.Contains(s, "@") {
				return "", fmt.Errorf("Non-simple name %s after auth_to_local rule DEFAULT/%s@%s", s, name, realm)
			}
			return comps[0], nil
		}
		if len(comps) != r.n {
			continue
		}
		s := r.format
		s = strings.ReplaceAll(s, "$0", realm)
		for i, c := range comps {
			s = strings.ReplaceAll(s, "$"+strconv.Itoa(i+1), c)
		}
		if r.match != nil && !r.match.MatchString(s) {
			continue
		}
		if r.from != nil {
			if r.global {
				s = r.from.ReplaceAllString(s, r.to)
			} else if loc := r.from.FindStringSubmatchIndex(s); loc != nil {
				var out []byte
				out = r.from.ExpandString(out, r.to, s, loc)
				s = s[:loc[0]] + string(out) + s[loc[1]:]
			}
		}
		if r.lowr {
			s = strings.ToLower(s)
		}
		if s == "" || strings.ContainsAny(s, "/@") {
			return "", fmt.Errorf("Non-simple name %s after auth_to_local rule %s/%s@%s", s, r.format, name, realm)
		}
		return s, nil
	}
	return "", fmt.Errorf("No rules applied to %s@%s (%s)", name, realm, KeyAuthToLocal)
}
