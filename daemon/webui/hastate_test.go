package webui

import (
	"errors"
	"net/http"
	"testing"

	"github.com/rs/zerolog"
)

// TestSetHAState: an admin's transition reaches the RM's HA loop with
// the state asked for; without the credential, or outside HA, or when
// the loop refuses, nothing is asked and the answer says why.
func TestSetHAState(t *testing.T) {
	var asked []string
	cfg := Config{Log: zerolog.Nop(), AdminSecret: adminKey, HATransition: func(state string) error {
		asked = append(asked, state)
		if state == "active" {
			return errors.New("ResourceManager rm1 is active already")
		}
		return nil
	}}
	h := newServer(newFakeBackend(), cfg, fakeNow).handler()
	auth := []string{"Content-Type", "application/json", "Authorization", "Bearer " + adminKey}
	if a := serve(h, http.MethodPut, "/ws/v1/loom/ha/state", `{"state":"Standby"}`, auth...); a.code != http.StatusOK {
		t.Errorf("to standby: %d %s", a.code, a.body)
	}
	remoteException(t, serve(h, http.MethodPut, "/ws/v1/loom/ha/state", `{"state":"active"}`, auth...), http.StatusBadRequest, "BadRequestException")
	remoteException(t, serve(h, http.MethodPut, "/ws/v1/loom/ha/state", `{"state":"standby"}`, "Content-Type", "application/json"),
		http.StatusForbidden, "ForbiddenException")
	if len(asked) != 2 || asked[0] != "standby" || asked[1] != "active" {
		t.Errorf("asked %v, want [standby active]", asked)
	}
	cfg.HATransition = nil
	plain := newServer(newFakeBackend(), cfg, fakeNow).handler()
	remoteException(t, serve(plain, http.MethodPut, "/ws/v1/loom/ha/state", `{"state":"standby"}`, auth...), http.StatusBadRequest, "BadRequestException")
}
