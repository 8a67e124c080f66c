// Package hcltype makes a resources.Type of a resource type written in HCL
// (a resource_type block, compiled by package eval into a
// resources.TypeDef): its load_current_value script reads, its
// converge_if_changed and converge_by scripts converge, and its child
// resources are planned under its address. The registry builds such types
// through New (resources.Registry.Define), from recipes at plan and from
// the definitions a plan carries at apply and show.
package hcltype
