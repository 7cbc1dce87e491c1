package server

import (
	stdlog "log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jcmturner/goidentity/v6"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/rs/zerolog"

	"github.com/loomrm/loom/daemon/webui"
	"github.com/loomrm/loom/internal/hadoopconf"
	"github.com/loomrm/loom/rpc"
)

// Kerberos on the web port, as Hadoop's AuthenticationFilter does it when
// hadoop.http.authentication.type is kerberos: every request must carry a
// SPNEGO token (Authorization: Negotiate ...) for the web server's
// principal, checked against its keytab; without one it is answered 401
// with WWW-Authenticate: Negotiate. The caller is the token's principal,
// as its short name (Hadoop's DEFAULT auth_to_local rule: the first
// component, for principals of the server's own realm), and user.name is
// ignored. Authenticated callers may make REST calls that change state.

const (
	keyHTTPAuthType  = "hadoop.http.authentication.type"
	keyHTTPPrincipal = "hadoop.http.authentication.kerberos.principal"
	keyHTTPKeytab    = "hadoop.http.authentication.kerberos.keytab"
)

// webAuth is how the web port authenticates: nil keytab for SIMPLE.
type webAuth struct {
	keytab    *keytab.Keytab
	principal string // service/host, without the realm
	realm     string
	toLocal   *rpc.AuthToLocal
}

func (a webAuth) kerberos() bool { return a.keytab != nil }

// loadWebAuth reads the web port's authentication. Every error names its
// key.
func loadWebAuth(c *hadoopconf.Conf, host string) (webAuth, error) {
	get := func(key, def string) (string, error) {
		if _, set := c.Raw(key); !set {
			return def, nil
		}
		v, err := c.String(key)
		return strings.TrimSpace(v), err
	}
	typ, err := get(keyHTTPAuthType, "simple")
	if err != nil {
		return webAuth{}, err
	}
	switch typ {
	case "simple", "":
		return webAuth{}, nil
	case "kerberos":
	default:
		return webAuth{}, c.Errorf(keyHTTPAuthType, "%q: Loom's web port takes simple or kerberos (SPNEGO)", typ)
	}
	princ, err := get(keyHTTPPrincipal, "HTTP/_HOST")
	if err != nil {
		return webAuth{}, err
	}
	if host == "" || host == "0.0.0.0" {
		if host, err = os.Hostname(); err != nil {
			return webAuth{}, err
		}
	}
	princ = strings.ReplaceAll(princ, "_HOST", strings.ToLower(host))
	name, realm, _ := strings.Cut(princ, "@")
	if !strings.HasPrefix(name, "HTTP/") {
		return webAuth{}, c.Errorf(keyHTTPPrincipal, "%q: SPNEGO's principal is HTTP/<host>[@REALM]", princ)
	}
	path, err := get(keyHTTPKeytab, "")
	if err != nil {
		return webAuth{}, err
	}
	if path == "" {
		return webAuth{}, c.Errorf(keyHTTPKeytab, "no keytab for %s: with %s=kerberos the web server needs its key", princ, keyHTTPAuthType)
	}
	kt, err := keytab.Load(path)
	if err != nil {
		return webAuth{}, c.Errorf(keyHTTPKeytab, "%s: %v", path, err)
	}
	found := false
	for _, e := range kt.Entries {
		if strings.Join(e.Principal.Components, "/") == name && (realm == "" || e.Principal.Realm == realm) {
			found, realm = true, e.Principal.Realm
		}
	}
	if !found {
		return webAuth{}, c.Errorf(keyHTTPKeytab, "%s holds no key for %s (%s)", path, princ, keyHTTPPrincipal)
	}
	toLocal, err := rpc.AuthToLocalFromConf(c, realm)
	if err != nil {
		return webAuth{}, err
	}
	return webAuth{keytab: kt, principal: name, realm: realm, toLocal: toLocal}, nil
}

// wrap puts SPNEGO in front of h.
func (a webAuth) wrap(h http.Handler, log zerolog.Logger) http.Handler {
	if !a.kerberos() {
		return h
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := goidentity.FromHTTPRequestContext(r)
		if id == nil {
			http.Error(w, "no authenticated identity", http.StatusUnauthorized)
			return
		}
		user, err := a.shortName(id.UserName(), id.Domain())
		if err != nil {
			log.Warn().Str("principal", id.UserName()+"@"+id.Domain()).Err(err).Msg("web caller refused")
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, webui.WithAuthenticatedUser(r, user))
	})
	return spnego.SPNEGOKRB5Authenticate(inner, a.keytab, service.KeytabPrincipal(a.principal),
		// MIT KDCs put a PAC without Windows' logon info in tickets:
		// nothing in it is needed here.
		service.DecodePAC(false), service.MaxClockSkew(5*time.Minute),
		// Refusals and successes, in the RM's log.
		service.Logger(stdlog.New(log.With().Str("component", "spnego").Logger(), "", 0)))
}

// shortName maps a caller's principal to its user name by
// hadoop.security.auth_to_local (DEFAULT: the first component, for the
// server's realm).
func (a webAuth) shortName(name, realm string) (string, error) {
	return a.toLocal.ShortName(name, realm)
}

// webHost is the host part of the web address, for _HOST.
func webHost(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}
