package resources

// Builtin returns a registry of toque's built-in resource types: file,
// directory and link. Callers add further types by building their own
// registry; nothing registers itself.
func Builtin() *Registry {
	return NewRegistry(BuiltinTypes()...)
}

// BuiltinTypes lists the built-in types, in the order they are documented.
func BuiltinTypes() []Type {
	return []Type{FileType(), DirectoryType(), LinkType()}
}
