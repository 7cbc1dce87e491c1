package server

import (
	"strings"

	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ACLs, as YARN checks them when yarn.acl.enable is true: an app may be
// killed by its owner, by the users its MODIFY_APP ACL names, or by an
// admin (yarn.admin.acl); only an admin may change P(Altruism). The user
// is who the IPC connection context says (or REST's user.name): SIMPLE
// auth, no Kerberos.

// acl is a Hadoop access control list: "*" for everyone, or users
// separated by commas, then optionally a space and groups (Loom knows no
// groups, so those never match).
type acl struct {
	all   bool
	users map[string]bool
}

func parseACL(s string) acl {
	if strings.TrimSpace(s) == "*" {
		return acl{all: true}
	}
	users, _, _ := strings.Cut(s, " ")
	a := acl{users: map[string]bool{}}
	for _, u := range strings.Split(users, ",") {
		if u = strings.TrimSpace(u); u != "" {
			a.users[u] = true
		}
	}
	return a
}

func (a acl) allows(user string) bool { return a.all || a.users[user] }

// isAdmin says whether user may administer the cluster.
func (r *RM) isAdmin(user string) bool {
	return !r.cfg.ACLEnabled || r.cfg.AdminACL.allows(user)
}

// checkModify refuses a user who may not modify (kill) an app. Callers
// hold mu.
func (r *RM) checkModify(user string, a *appRec) error {
	if !r.cfg.ACLEnabled || user == a.user || r.cfg.AdminACL.allows(user) {
		return nil
	}
	for _, e := range a.ctx.GetAmContainerSpec().GetApplication_ACLs() {
		if e.GetAccessType() == pb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP && parseACL(e.GetAcl()).allows(user) {
			return nil
		}
	}
	return rpc.Errorf(rpc.ClassAccessControl, "User %s cannot perform operation MODIFY_APP on %s (owned by %s; yarn.admin.acl and the app's MODIFY_APP ACL do not name %s)",
		user, rpc.AppIDString(a.yid), a.user, user)
}
