// Package testenv decides, in one place, whether a test can run on this
// machine: a test names what it needs (MustHave(t, testenv.Csh)) and
// testenv probes for it — by really trying it, once per process — then lets
// the test go on, skips it with a message that says what is missing and how
// to get it, or fails it.
//
// It fails rather than skips when the strict variable TOQUE_TEST_STRICT
// names a tier that promises the requirement: .ci/run sets it, so that on
// CI a missing program or a broken namespace set-up is a red build rather
// than a silent skip. The tiers:
//
//	TOQUE_TEST_STRICT=  (unset, "" or "0")  local: every unmet requirement skips
//	TOQUE_TEST_STRICT=1 (or "root")        CI's `make test`, as root
//	TOQUE_TEST_STRICT=nonroot              `make test-nonroot`, as nobody
//
// What each tier promises on toque's CI machine kind (Debian 12, amd64;
// scripts/test-deps installs the programs and fails in strict mode when it
// cannot):
//
//	bash, dash-sh, csh, python3, perl, git, jq, script, userns, overlay,
//	fhs-dirs, nobody, dev-full, machine-id, systemctl, dpkg-dev, locales,
//	visudo, update-alternatives, ssh-keygen, dnf-rpm: both tiers
//	root, unshare, nsenter, shadow-tools, cron, systemd-nspawn, loop-device,
//	debian-rootfs, sshd, netns: the root tier
//	non-root: the nonroot tier
//	pwsh: neither — it stays a skip, with its message
//
// pwsh is not packaged by Debian and cannot be installed from the registries
// CI reaches. systemd-nspawn comes from systemd-container, which
// scripts/test-deps installs at the installed systemd's version;
// debian-rootfs needs debootstrap, which it installs, and the Debian
// mirror CI installs packages from.
//
// A test that checks one behaviour as root and another otherwise asks Has
// and asserts something on each branch.
//
// testenv is for tests only. It is not a test framework, and it does not
// install anything: scripts/test-deps does.
package testenv

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Requirement is something a test needs of the machine.
type Requirement string

// The requirements testenv knows. Each is probed by really using it.
const (
	Root      Requirement = "root"           // running as uid 0
	NonRoot   Requirement = "non-root"       // running as any uid but 0
	Bash      Requirement = "bash"           // bash runs
	DashSh    Requirement = "dash-sh"        // /bin/sh is dash: `[ a == a ]` is "unexpected operator", `[[` is "not found"
	Csh       Requirement = "csh"            // csh runs
	Pwsh      Requirement = "pwsh"           // PowerShell runs
	Python3   Requirement = "python3"        // python3 runs
	Perl      Requirement = "perl"           // perl runs
	Git       Requirement = "git"            // git runs
	Jq        Requirement = "jq"             // jq runs
	Script    Requirement = "script"         // script(1) gives a command a terminal
	Unshare   Requirement = "unshare"        // unshare(1) makes mount and UTS namespaces (needs root)
	UserNS    Requirement = "userns"         // unshare(1) makes a user namespace with a mount namespace, as any user
	Overlay   Requirement = "overlay"        // overlayfs mounts in a private mount namespace
	Nspawn    Requirement = "systemd-nspawn" // runs a command in a container over a volatile copy of this host (root)
	Systemctl Requirement = "systemctl"      // systemctl and systemd-analyze run (systemd installed, running or not)
	FHSDirs   Requirement = "fhs-dirs"       // /opt and /var are directories
	Nobody    Requirement = "nobody"         // the user nobody and the group nogroup exist (tests run children as them)
	DevFull   Requirement = "dev-full"       // /dev/full: every write fails with ENOSPC
	MachineID Requirement = "machine-id"     // /etc/machine-id exists (tests hide it)
	Nsenter   Requirement = "nsenter"        // nsenter(1) joins another process's namespaces (needs root)
	Shadow    Requirement = "shadow-tools"   // useradd, usermod, userdel, groupadd, groupmod, groupdel, gpasswd, chpasswd (root runs them)
	Cron      Requirement = "cron"           // Debian's cron daemon (tests run it in a namespace, never on the host)
	// DpkgDev is apt and dpkg, with dpkg-dev's dpkg-scanpackages: the
	// package tests build fixture packages and a local repository.
	DpkgDev Requirement = "dpkg-dev"
	// DnfRPM is rpm with rpmbuild, dnf and createrepo_c (Debian packages
	// rpm, dnf and createrepo-c): the dnf provider's tests build fixture
	// .rpm packages and a local repository, and run dnf in a mount
	// namespace, never against the machine's own rpm database.
	DnfRPM Requirement = "dnf-rpm"
	// LoopDev is an ext4 image made with mkfs.ext4 and mounted through a
	// loop device in a private mount namespace (root; the mount tests).
	LoopDev Requirement = "loop-device"
	// Locales is glibc's localedef with the locale sources
	// (/usr/share/i18n/SUPPORTED) and Debian's locale-gen (the locale tests
	// compile locales into throwaway roots and namespaces).
	Locales Requirement = "locales"
	// Visudo is sudo's visudo, which checks a sudoers file (-cf) without
	// touching the host's (the sudo tests check temp files only).
	Visudo Requirement = "visudo"
	// UpdateAlternatives is dpkg's update-alternatives with --altdir and
	// --admindir (the alternatives tests use throwaway directories).
	UpdateAlternatives Requirement = "update-alternatives"
	// SSHKeygen is OpenSSH's ssh-keygen and ssh-keyscan (the known hosts
	// and authorized keys tests make keys and scan a server on loopback).
	SSHKeygen Requirement = "ssh-keygen"
	// DebianRootfs is a fresh Debian 12's root file system for booted
	// containers (the hardening example's test): made once by
	// scripts/debian-rootfs in DebianRootfsDir, which needs root,
	// debootstrap and a Debian mirror, or made already.
	DebianRootfs Requirement = "debian-rootfs"
	// Sshd is OpenSSH's server and client (the fleet tests run an sshd per
	// host, in namespaces; never the machine's own).
	Sshd Requirement = "sshd"
	// NetNS is network namespaces joined by veth pairs, made with unshare
	// and ip (root; the fleet tests' hosts).
	NetNS Requirement = "netns"
)

// RootfsEnv names the directory of the Debian root file system the
// container tests boot (DebianRootfsDir).
const RootfsEnv = "TOQUE_TEST_ROOTFS"

// DebianRootfsDir is where scripts/debian-rootfs keeps the Debian 12 root
// file system the container tests boot copies of: $TOQUE_TEST_ROOTFS, or
// /var/cache/toque-test/debian-bookworm (outside the repository, kept
// from one run to the next).
func DebianRootfsDir() string {
	if d := os.Getenv(RootfsEnv); d != "" {
		return d
	}
	return "/var/cache/toque-test/debian-bookworm"
}

// StrictEnv is the variable that makes unmet promised requirements fail.
const StrictEnv = "TOQUE_TEST_STRICT"

// tier is what a strict run promises.
type tier string

const (
	local   tier = ""
	rootT   tier = "root"
	nonroot tier = "nonroot"
)

// promised says which strict tiers promise each requirement; a requirement
// missing here is never promised.
var promised = map[Requirement][]tier{
	Root:               {rootT},
	NonRoot:            {nonroot},
	Bash:               {rootT, nonroot},
	DashSh:             {rootT, nonroot},
	Csh:                {rootT, nonroot},
	Python3:            {rootT, nonroot},
	Perl:               {rootT, nonroot},
	Git:                {rootT, nonroot},
	Jq:                 {rootT, nonroot},
	Script:             {rootT, nonroot},
	UserNS:             {rootT, nonroot},
	FHSDirs:            {rootT, nonroot},
	Nobody:             {rootT, nonroot},
	DevFull:            {rootT, nonroot},
	MachineID:          {rootT, nonroot},
	Overlay:            {rootT, nonroot},
	Systemctl:          {rootT, nonroot},
	Unshare:            {rootT},
	Nspawn:             {rootT},
	Nsenter:            {rootT},
	Shadow:             {rootT},
	Cron:               {rootT},
	DpkgDev:            {rootT, nonroot},
	DnfRPM:             {rootT, nonroot},
	LoopDev:            {rootT},
	Locales:            {rootT, nonroot},
	Visudo:             {rootT, nonroot},
	UpdateAlternatives: {rootT, nonroot},
	SSHKeygen:          {rootT, nonroot},
	DebianRootfs:       {rootT},
	Sshd:               {rootT},
	NetNS:              {rootT},
}

// MustHave lets the test go on when the machine meets every requirement.
// Otherwise it skips the test, saying what is missing and how to get it —
// or fails it, when the strict tier in TOQUE_TEST_STRICT promises that
// requirement. An unknown requirement or strict value fails the test.
func MustHave(t testing.TB, reqs ...Requirement) {
	t.Helper()
	tr, err := strictTier(os.Getenv(StrictEnv))
	if err != nil {
		t.Fatal(err)
		return
	}
	for _, r := range reqs {
		verdict, msg := decide(r, tr, check(r))
		switch verdict {
		case fail:
			t.Fatal(msg)
			return
		case skip:
			t.Skip(msg)
			return
		}
	}
}

// Has reports whether the machine meets r, and if not, why. It never skips
// or fails: it is for tests that check one behaviour or another depending
// on the machine (as root, as another user). Such a test must still make
// each branch assert something.
func Has(r Requirement) (bool, string) {
	res := check(r)
	if res.err != nil {
		return false, res.err.Error()
	}
	return true, ""
}

type verdict int

const (
	run verdict = iota
	skip
	fail
)

// decide turns a probe's result into run, skip or fail, with the message.
func decide(r Requirement, tr tier, res result) (verdict, string) {
	if res.err == nil {
		return run, ""
	}
	msg := fmt.Sprintf("needs %s: %v", r, res.err)
	if res.hint != "" {
		msg += " (" + res.hint + ")"
	}
	if !res.known {
		return fail, msg
	}
	if tr == local {
		return skip, msg
	}
	for _, p := range promised[r] {
		if p == tr {
			return fail, msg + fmt.Sprintf("; %s=%s promises it on this machine kind (see internal/testenv)", StrictEnv, tr)
		}
	}
	return skip, msg + fmt.Sprintf("; not promised by %s=%s", StrictEnv, tr)
}

func strictTier(v string) (tier, error) {
	switch strings.TrimSpace(v) {
	case "", "0":
		return local, nil
	case "1", "root":
		return rootT, nil
	case "nonroot":
		return nonroot, nil
	}
	return local, fmt.Errorf("%s=%q: want unset, 0, 1 (or root) or nonroot", StrictEnv, v)
}

// result is one probe's outcome: err is nil when the requirement is met.
type result struct {
	err   error
	hint  string // how to get it, for the message
	known bool   // false for a requirement testenv does not know
}

var (
	mu     sync.Mutex
	probed = map[Requirement]func() result{}
)

// check probes r once per process; tests that ask at the same time wait
// for the one probe.
func check(r Requirement) result {
	mu.Lock()
	f, ok := probed[r]
	if !ok {
		f = sync.OnceValue(func() result { return probe(r) })
		probed[r] = f
	}
	mu.Unlock()
	return f()
}
