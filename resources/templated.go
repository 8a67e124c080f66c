package resources

// Templated is implemented by types whose text content is rendered from an
// HCL template at plan time (the built-in template type). This package
// never renders: the framework that evaluates recipes (package eval)
// sees the interface, renders the template named by the properties
// TemplateProperties lists, with the recipe's functions, `node`, `host` and
// the variables, and stores the text in the content property before the
// Resource is built. Load, Plan and Converge then see an ordinary file
// resource whose content is the rendered text, so the plan holds, diffs and
// applies exactly that text.
type Templated interface {
	Type
	TemplateProperties() TemplateProps
}

// TemplateProps names the properties of a Templated type.
type TemplateProps struct {
	// Source is the template file's path (relative to the cookbook's
	// templates/ folder, or to the recipe's folder in directory mode).
	Source string
	// Inline is the inline template: an HCL template expression evaluated
	// with the variables in scope.
	Inline string
	// Variables is the map of template variables.
	Variables string
	// Content receives the rendered text.
	Content string
}
