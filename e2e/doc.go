// Package e2e holds toque's end-to-end tests. They run the toque command
// on real recipes, files and processes in scratch directories: in-process
// through command.Run for most Go tests, as a real process for the
// scenarios of testdata/scripts and wherever only a process will do
// (signals, terminals, closed pipes, locks held by another process), and
// in mount namespaces or a container where they change accounts, packages
// or services, never the machine's own.
//
// It is not a library: nothing imports it, and it has no code outside its
// tests but this comment.
package e2e
