package webui

import "net/http"

// RESTWritesKey is the key that lets REST calls change state. It is off
// by default: with SIMPLE auth the web port knows a caller only by the
// user.name it claims, so an open submission would run any command,
// as anyone, on the cluster's nodes (unsecured YARN clusters are taken
// over through exactly this).
const RESTWritesKey = "loom.webapp.rest-write.enabled"

// ownCheck names the routes that change state under a check of their
// own rather than RESTWritesKey: P(Altruism) asks for the admin
// credential (loom.admin.secret) whatever the key says.
var ownCheck = map[string]bool{"setAltruism": true, "setHAState": true}

// writes reports whether a route changes state: every route but a GET
// does.
func (rt route) writes() bool { return rt.Method != http.MethodGet }

// checkWrite refuses a call that changes state unless the Backend allows
// REST writes. It runs before the route reads its body or asks the
// Backend anything, so a refused call has no effect at all.
func (c *call) checkWrite(rt route) error {
	if !rt.writes() || ownCheck[rt.Name] || c.s.b.RESTWritesEnabled() {
		return nil
	}
	e := restWritesOff(c.r.Method, c.r.URL.Path)
	c.s.cfg.Log.Warn().Str("route", rt.Name).Str("user", c.user()).Str("remote", remoteIP(c.r)).
		Msg("REST call that changes state refused: " + RESTWritesKey + " is off")
	return e
}

// restWritesOff is the refusal: a 403 that says why and how to turn
// writes on.
func restWritesOff(method, path string) *webError {
	return forbidden("%s %s is refused: REST calls that change state are off by default, as this ResourceManager "+
		"knows web callers only by the user.name they claim (SIMPLE auth) and anyone who can reach this port could "+
		"run commands on the cluster; set %s=true to allow them where every client of the web port is trusted",
		method, path, RESTWritesKey)
}
