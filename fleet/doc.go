// Package fleet plans and applies toque on many hosts over OpenSSH: one
// reviewed bundle of per-host plans, applied in rolling batches, where each
// host refuses what it was not shown.
//
// What it is:
//
//   - The inventory (fleet.hcl): hosts by ssh alias, groups of them, the
//     recipe or policy directory each runs, per-host and per-group node
//     attributes (shipped as attribute files at Chef's normal level, named
//     after the inventory so a plan's provenance points back at it),
//     become = "sudo", ssh options and the rollout (inventory.go, limit.go).
//   - The transport: the system ssh client, with one ControlMaster per
//     host started explicitly on a socket of toque's own, failures
//     classified from the master's log (ssh.go). The masters persist
//     (ControlPersist) and the next command reuses them while what they
//     were trusted under is unchanged; what ssh -G said of each alias is
//     kept while its inputs are (resolvecache.go). Every process is
//     started through internal/shellexec.
//   - The agent: toque itself, a static binary for the host's OS and
//     architecture, shipped content-addressed into a per-user cache and
//     verified when it arrives (agent.go, remote.go).
//   - The bundle (fleet.plan): a manifest and each host's plan.out, byte
//     for byte as the host wrote it, signed like a plan (bundle.go).
//   - Grouping hosts whose changes are identical (group.go), and the
//     rollout: batches, a failure budget, a graceful stop (rollout.go).
//   - The orchestration of fleet plan and fleet apply (plan.go, apply.go),
//     reporting progress through Hooks, which command/views implements.
//
// What it is not: it prints nothing (command/views renders everything),
// it evaluates no recipe (each host plans with its own toque), it keeps no
// state between runs but the files the user names (the bundle and the
// result file) and, in its private control directory, what only saves
// time (the masters, ssh -G's outputs, the agents' digests: each used
// only while what it came from is unchanged, and each safe to remove),
// and it is not an ssh implementation: whatever the user's
// ssh client and its configuration do (Match, Include, ProxyJump,
// certificates, agents) is what toque gets.
package fleet
