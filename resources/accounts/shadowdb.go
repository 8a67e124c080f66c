package accounts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/toquehq/toque/resources/internal/hostexec"
)

// This file reads the local account databases — /etc/passwd, /etc/group
// and /etc/shadow — for the user, group and cron_d types, in one pass per
// batch: a plan of 100 users parses each file once, and starts no
// process. It reads the files, not NSS: the shadow tools that converge
// users and groups change only these files, so users from LDAP or sssd
// are not toque's to manage. Only a name the files lack is looked up in
// NSS, where a member, a primary group or a cron file's user may be.

// passwdEntry is one line of /etc/passwd.
type passwdEntry struct {
	name        string
	uid, gid    uint32
	gecos, home string
	shell       string
}

// groupEntry is one line of /etc/group.
type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// shadowEntry is one line of /etc/shadow: the password field as it is
// (a leading "!" is a lock), the expiry day (days since 1970-01-01) and
// the days of inactivity allowed after the password expires; -1 when a
// field is empty.
type shadowEntry struct {
	passwd   string
	expire   int64
	inactive int64
	// lastChange, minDays, maxDays and warnDays are the password's
	// ageing (chage -d, -m, -M, -W), read for data "users".
	lastChange, minDays, maxDays, warnDays int64
}

// accountsDB is one reading of the account databases under a root ("" is
// the host's /).
type accountsDB struct {
	users  map[string]*passwdEntry
	uids   map[uint32][]string // uid → user names, in file order
	groups map[string]*groupEntry
	gids   map[uint32][]string // gid → group names, in file order
	shadow map[string]*shadowEntry
	// shadowErr says why /etc/shadow was not read ("" when it was, or was
	// not asked for).
	shadowErr string
	// userGroups is login.defs' USERGROUPS_ENAB: useradd without --gid
	// makes a group named like the user.
	userGroups bool
	// nss is set for the host's databases (root ""): a name the files do
	// not have may still be known to NSS (LDAP, sssd), as it is to the
	// tools and to cron, which look names up with getpwnam and getgrnam.
	nss bool
}

// Which databases readAccounts reads.
const (
	dbPasswd = 1 << iota
	dbGroup
	dbShadow
	dbLoginDefs
)

// readAccounts reads the databases which names, under root. A database
// that does not exist is empty; /etc/shadow that toque's user may not read
// is recorded in shadowErr (a plan as non-root still reads what it may);
// any other failure is an error naming the file.
func readAccounts(root string, which int) (*accountsDB, error) {
	db := &accountsDB{
		users: map[string]*passwdEntry{}, uids: map[uint32][]string{},
		groups: map[string]*groupEntry{}, gids: map[uint32][]string{},
		shadow: map[string]*shadowEntry{},
		nss:    root == "",
	}
	if which&dbPasswd != 0 {
		if err := eachLine(root, "/etc/passwd", 7, func(f []string) {
			uid, err1 := parseID(f[2])
			gid, err2 := parseID(f[3])
			if err1 != nil || err2 != nil || db.users[f[0]] != nil {
				return // malformed, or a later duplicate: the tools and NSS take the first
			}
			db.users[f[0]] = &passwdEntry{name: f[0], uid: uid, gid: gid, gecos: f[4], home: f[5], shell: f[6]}
			db.uids[uid] = append(db.uids[uid], f[0])
		}); err != nil {
			return nil, err
		}
	}
	if which&dbGroup != 0 {
		if err := eachLine(root, "/etc/group", 4, func(f []string) {
			gid, err := parseID(f[2])
			if err != nil || db.groups[f[0]] != nil {
				return
			}
			var members []string
			for _, m := range strings.Split(f[3], ",") {
				if m = strings.TrimSpace(m); m != "" {
					members = append(members, m)
				}
			}
			db.groups[f[0]] = &groupEntry{name: f[0], gid: gid, members: members}
			db.gids[gid] = append(db.gids[gid], f[0])
		}); err != nil {
			return nil, err
		}
	}
	if which&dbShadow != 0 {
		err := eachLine(root, "/etc/shadow", 9, func(f []string) {
			if db.shadow[f[0]] != nil {
				return
			}
			db.shadow[f[0]] = &shadowEntry{passwd: f[1], expire: parseDays(f[7]), inactive: parseDays(f[6]),
				lastChange: parseDays(f[2]), minDays: parseDays(f[3]), maxDays: parseDays(f[4]), warnDays: parseDays(f[5])}
		})
		switch {
		case errors.Is(err, fs.ErrPermission):
			db.shadowErr = fmt.Sprintf("%s may be read only by root, and toque runs as uid %d", accountsPath(root, "/etc/shadow"), hostexec.EffectiveUID())
		case err != nil:
			return nil, err
		}
	}
	if which&dbLoginDefs != 0 {
		v, err := loginDefs(root, "USERGROUPS_ENAB")
		if err != nil {
			return nil, err
		}
		db.userGroups = strings.EqualFold(v, "yes")
	}
	return db, nil
}

// loginDefs is the value of key in /etc/login.defs ("" when unset).
func loginDefs(root, key string) (string, error) {
	path := accountsPath(root, "/etc/login.defs")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	val := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == key {
			val = f[1]
		}
	}
	return val, nil
}

// accountsPath is file under root.
func accountsPath(root, file string) string {
	if root == "" {
		return file
	}
	return filepath.Join(root, file)
}

// eachLine calls fn with the colon-separated fields of every entry of
// file (at least min fields; more are ignored). Blank lines, comments and
// NIS compat lines ("+", "-") are skipped, as glibc's files module does.
func eachLine(root, file string, min int, fn func([]string)) error {
	path := accountsPath(root, file)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < min || f[0] == "" {
			continue
		}
		fn(f)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// parseID parses a uid or gid field.
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}

// parseDays parses a shadow day count; empty or malformed is -1.
func parseDays(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// groupByRef resolves a group given by name or numeric id: from the
// files, else (the host's) from NSS.
func (db *accountsDB) groupByRef(ref string) (gid uint32, ok bool) {
	if g := db.groups[ref]; g != nil {
		return g.gid, true
	}
	id, err := parseID(ref)
	if err == nil {
		if _, ok := db.gids[id]; ok {
			return id, true
		}
	}
	if !db.nss {
		return 0, false
	}
	var g *user.Group
	if err == nil {
		g, err = user.LookupGroupId(ref)
	} else {
		g, err = user.LookupGroup(ref)
	}
	if err != nil {
		return 0, false
	}
	n, err := parseID(g.Gid)
	return n, err == nil
}

// hasUser reports whether a user called name exists: in the files, else
// (the host's) in NSS.
func (db *accountsDB) hasUser(name string) bool {
	if db.users[name] != nil {
		return true
	}
	if !db.nss {
		return false
	}
	_, err := user.Lookup(name)
	return err == nil
}

// groupName is how a gid is shown: its first group's name, else the id.
func (db *accountsDB) groupName(gid uint32) string {
	if names := db.gids[gid]; len(names) > 0 {
		return names[0]
	}
	return strconv.FormatUint(uint64(gid), 10)
}

// otherOwner is a user other than name that has uid, or "".
func (db *accountsDB) otherUser(uid uint32, name string) string {
	for _, n := range db.uids[uid] {
		if n != name {
			return n
		}
	}
	return ""
}

// otherGroup is a group other than name that has gid, or "".
func (db *accountsDB) otherGroup(gid uint32, name string) string {
	for _, n := range db.gids[gid] {
		if n != name {
			return n
		}
	}
	return ""
}

// missingUsers lists the names no user has, sorted.
func (db *accountsDB) missingUsers(names []string) []string {
	var out []string
	for _, n := range names {
		if !db.hasUser(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// UserExists returns a function that reports whether a user exists on the
// host under root (its passwd file, read once, and NSS for root "").
func UserExists(root string) (func(name string) bool, error) {
	db, err := readAccounts(root, dbPasswd)
	if err != nil {
		return nil, err
	}
	return db.hasUser, nil
}
