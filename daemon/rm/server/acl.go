package server

import (
	"github.com/loomrm/loom/rpc"
	pb "github.com/loomrm/loom/rpc/yarnpb"
)

// ACLs, as YARN checks them when yarn.acl.enable is true: an app may be
// killed by its owner, by the users its MODIFY_APP ACL names, or by an
// admin (yarn.admin.acl); only an admin may change P(Altruism). The user
// is the connection's: its Kerberos principal's short name or token's
// owner where those authenticate it, else who the IPC connection context
// says (or REST's user.name, or the SPNEGO principal). Groups come from
// this machine's group database, as Hadoop's default group mapping.

// isAdmin says whether user may administer the cluster.
func (r *RM) isAdmin(user string) bool {
	return !r.cfg.ACLEnabled || r.aclAllows(r.cfg.AdminACL, user)
}

// checkModify refuses a user who may not modify (kill) an app. Callers
// hold mu.
func (r *RM) checkModify(user string, a *appRec) error {
	if !r.cfg.ACLEnabled || user == a.user || r.isAdmin(user) {
		return nil
	}
	for _, e := range a.ctx.GetAmContainerSpec().GetApplication_ACLs() {
		if e.GetAccessType() == pb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP && r.aclAllows(rpc.ParseACL(e.GetAcl()), user) {
			return nil
		}
	}
	return rpc.Errorf(rpc.ClassAccessControl, "User %s cannot perform operation MODIFY_APP on %s (owned by %s; yarn.admin.acl and the app's MODIFY_APP ACL do not name %s)",
		user, rpc.AppIDString(a.yid), a.user, user)
}

// groups finds user's groups when acl names any.
func (r *RM) groups(user string, acl rpc.ACL) []string {
	if !acl.NamesGroups() || r.cfg.Groups == nil {
		return nil
	}
	return r.cfg.Groups(user)
}

func (r *RM) aclAllows(acl rpc.ACL, user string) bool { return acl.Allows(user, r.groups(user, acl)) }

// canView says whether user may see an app in full: its owner, an admin,
// or a user its VIEW_APP (or MODIFY_APP) ACL names. Callers hold mu.
func (r *RM) canView(user string, a *appRec) bool {
	if !r.cfg.ACLEnabled || user == a.user || r.isAdmin(user) {
		return true
	}
	for _, e := range a.ctx.GetAmContainerSpec().GetApplication_ACLs() {
		switch e.GetAccessType() {
		case pb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP, pb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP:
			if r.aclAllows(rpc.ParseACL(e.GetAcl()), user) {
				return true
			}
		}
	}
	return false
}
