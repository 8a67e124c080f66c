package shellexec

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// identity is the user and group a child runs as.
type identity struct {
	cred *syscall.Credential // nil: run as toque itself
	uid  int
	gid  int
	// other is set when the child runs as a user other than toque's own: it
	// then starts from a clean login-like environment (loginEnv).
	other bool
	// env is the login layer: HOME, USER, LOGNAME and SHELL of the user
	// named, plus PATH when other; nil when no user was named.
	env map[string]string
}

// self is who toque runs as, passed in so the permission rule can be tested
// without being unprivileged.
type self struct{ euid, egid int }

func currentSelf() self { return self{euid: syscall.Geteuid(), egid: syscall.Getegid()} }

// resolveIdentity turns Spec.User and Spec.Group (names or numeric ids) into
// credentials. With only User, the user's primary group is used; with only
// Group, toque's user keeps running with that group. It reports unknown names
// and, when toque is not root, any change of user or group.
func resolveIdentity(userSpec, groupSpec string, me self) (*identity, error) {
	id := &identity{uid: me.euid, gid: me.egid}
	if userSpec == "" && groupSpec == "" {
		return id, nil
	}

	var u *user.User
	if userSpec != "" {
		var err error
		u, id.uid, err = lookupUser(userSpec)
		if err != nil {
			return nil, &UserError{User: userSpec, Err: err}
		}
		id.other = id.uid != me.euid
		id.env = loginVars(u, id.other)
	}

	switch {
	case groupSpec != "":
		gid, err := lookupGroup(groupSpec)
		if err != nil {
			return nil, &UserError{Group: groupSpec, Err: err}
		}
		id.gid = gid
	case u != nil:
		gid, err := strconv.Atoi(u.Gid)
		if err != nil {
			return nil, &UserError{User: userSpec, Err: fmt.Errorf("primary group id %q is not numeric", u.Gid)}
		}
		id.gid = gid
	default:
		return nil, &UserError{User: userSpec, Err: errors.New("no such user in the user database; set group as well to run under a bare uid")}
	}

	if id.uid == me.euid && id.gid == me.egid {
		return id, nil // nothing to switch
	}
	if me.euid != 0 {
		return nil, &UserError{User: userSpec, Group: groupSpec,
			Err: fmt.Errorf("not permitted: only root can run a command as another user or group (toque runs as uid %d, gid %d)", me.euid, me.egid)}
	}

	cred := &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid)}
	if userSpec == "" {
		// Group only: keep toque's supplementary groups.
		cred.NoSetGroups = true
	} else {
		cred.Groups = supplementaryGroups(u, id.gid)
	}
	id.cred = cred
	return id, nil
}

// lookupUser accepts a user name or a numeric uid. A numeric uid with no
// passwd entry is allowed (u is nil).
func lookupUser(s string) (*user.User, int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 1<<31-1 {
			return nil, 0, fmt.Errorf("uid %d out of range", n)
		}
		u, err := user.LookupId(s)
		if err != nil {
			return nil, n, nil
		}
		return u, n, nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, 0, errors.New("no such user")
		}
		return nil, 0, fmt.Errorf("looking up user: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, 0, fmt.Errorf("user id %q is not numeric", u.Uid)
	}
	return u, uid, nil
}

// lookupGroup accepts a group name or a numeric gid (which need not exist in
// the group database).
func lookupGroup(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 1<<31-1 {
			return 0, fmt.Errorf("gid %d out of range", n)
		}
		return n, nil
	}
	g, err := user.LookupGroup(s)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return 0, errors.New("no such group")
		}
		return 0, fmt.Errorf("looking up group: %w", err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("group id %q is not numeric", g.Gid)
	}
	return gid, nil
}

// supplementaryGroups lists the groups of u (like initgroups), always
// including gid. Without a user entry it is just gid.
func supplementaryGroups(u *user.User, gid int) []uint32 {
	groups := []uint32{uint32(gid)}
	if u == nil {
		return groups
	}
	ids, err := u.GroupIds()
	if err != nil {
		return groups
	}
	for _, s := range ids {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil || int(n) == gid {
			continue
		}
		groups = append(groups, uint32(n))
	}
	return groups
}

// loginVars are the variables a login as u sets: HOME, USER, LOGNAME and
// SHELL, and PATH when the child runs as another user (whose environment
// starts clean). A bare uid with no passwd entry (u nil) gets HOME=/ and
// SHELL=/bin/sh, as a login would, and no USER or LOGNAME.
func loginVars(u *user.User, other bool) map[string]string {
	env := map[string]string{"HOME": "/", "SHELL": "/bin/sh"}
	if u != nil {
		if u.HomeDir != "" {
			env["HOME"] = u.HomeDir
		}
		env["USER"], env["LOGNAME"] = u.Username, u.Username
		env["SHELL"] = loginShell(passwdFile, u.Username, u.Uid)
	}
	if other {
		env["PATH"] = defaultPATH
	}
	return env
}

// passwdFile is where loginShell reads login shells (a variable for tests).
var passwdFile = "/etc/passwd"

// loginShell is the login shell the passwd file gives name (with uid), or
// /bin/sh when the file does not list it (users from LDAP and other NSS
// sources: os/user does not report shells) or leaves the field empty, as
// login(1) does.
func loginShell(file, name, uid string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "/bin/sh"
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) != 7 || f[0] != name || f[2] != uid {
			continue
		}
		if sh := strings.TrimSpace(f[6]); sh != "" {
			return sh
		}
		return "/bin/sh"
	}
	return "/bin/sh"
}
