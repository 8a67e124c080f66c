// Package resources is the contract between toque's engine and its
// resource types: what a type is (Type, Schema, Property), what it reads
// and plans (Resource, State, Step, Change, Need), the framework half of
// planning and converging (PlanStep, ConvergeStep, Diff,
// ConvergeIfChanged, Predict), and the Registry that names the types.
//
// It holds no type. The built-in types live in families, each a package of
// its own: resources/files (file, template, directory, link, remote_file,
// the file editors file_line, file_block and ini_setting, archive_file,
// with the held-directory file system code and backups),
// resources/accounts (user, group, authorized_keys and the shadow
// databases), resources/packages (package on apt/dpkg and dnf/rpm,
// apt_repository, apt_update, yum_repository, dnf_makecache),
// resources/commands (execute and the script types),
// resources/systemd (service, systemd_unit), resources/system (cron_d,
// sysctl, mount, kernel_module, swap_file, hostname, timezone, locale,
// alternatives, sudo, ssh_known_hosts_entry), resources/vcs (git) and
// resources/hcltype (types written in HCL). resources/builtin assembles
// them into the registry; no other package imports a family (a test in
// resources/builtin checks it), and resources/resourcetest holds the
// types and helpers tests use.
//
// # Writing a type
//
// A type implements Type: Schema, Load (Chef's load_current_value), Plan
// of one declared action (what it would change, usually computed with
// Diff or ConvergeIfChanged: Chef's converge_if_changed) and Steps (one
// function per kind of step its Plan returns: Create, Update, Delete,
// Run). The framework resolves the action and answers "nothing" before
// Plan, refuses an undeclared action, skips no-ops and skips, and words a
// step the type has no function for (PlanStep, ConvergeStep); it decodes,
// normalises and validates recipe values against the schema (package
// eval) and keeps the rule that only set properties are converged.
//
// # Optional interfaces
//
// A type implements one of these only when it needs what it gives:
//
//   - BatchLoader: reads many resources of the type at once (one
//     dpkg-query for every package, one systemctl show for every unit).
//     For a type whose reads cost a process or a parse per call.
//   - BatchSharer: a BatchLoader whose batch holds the resources of
//     other types too (BatchKey), in declaration order, each of which
//     may be given the state the ones before it leave: the file editors,
//     several of which edit one file.
//   - Predictor: says the state an action leaves when its changes do not
//     (a restart, a purge), so that the next action of the same resource
//     is planned from it. Without it, Predict applies the step's changes.
//   - Runner: the process a resource runs (execute, the script types).
//     Guards and the scripts of HCL types run through a Runner.
//   - Stager: stages a step (a new file written under a temporary name)
//     so that apply makes many of them durable with one flush.
//   - Templated: renders its content from an HCL template at plan time.
//   - Deriver: fills in properties from others at evaluation (cron_d's
//     file from its schedule), so the plan shows the derived value.
//   - NeedMeeter: a step with work meets needs that later steps wait for
//     at apply (apt_update: the lists a package's version is known from).
//   - Awaiter: a step may leave a value known only at apply, and says
//     which facts of its reading that value is known from.
//   - Foreseer: Load reads, where the host lacks the thing, what an
//     earlier step of the plan predicts it will be (Foresight, built from
//     the steps' Provides that carry a Prediction: a package's files and
//     units), so that a template over a package's configuration file
//     plans from the file the package ships.
//   - PlanFacter: some facts of a reading are about the plan's
//     circumstances (a package's candidate), not the thing; apply's
//     end-state check does not compare them.
//   - Definer and Composite: a type written in HCL, whose definition a
//     plan carries and whose actions may declare child resources.
//
// A Property's HostCheck reads the host at plan time (an owner must
// exist); its Normalize, Equal, Validate and Warn are pure.
//
// This package is not the planner or the applier: it never reads plan
// files, never renders output and never imports plan, apply or command.
// docs/resource-authors.md is the guide, with each method's contract.
package resources
