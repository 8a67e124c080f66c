package eval

import (
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// tolist and toset as go-cty's, with a shortcut for what recipes give
// them most: a tuple whose elements are all of one primitive type (a
// list of strings written in HCL, or read from node attributes). go-cty
// unifies the element types of a tuple pairwise to convert it, which
// takes a second for 10,000 strings; for_each = toset(node.web.names)
// must not.
var (
	toListFunc = homogeneousTo(stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)), cty.List)
	toSetFunc  = homogeneousTo(stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)), cty.Set)
)

// homogeneousTo is slow (a conversion to a list or set) with the
// shortcut: kind makes the collection type of an element type.
func homogeneousTo(slow function.Function, kind func(cty.Type) cty.Type) function.Function {
	params := slow.Params()
	return function.New(&function.Spec{
		Description: slow.Description(),
		Params:      params,
		Type: func(args []cty.Value) (cty.Type, error) {
			if et, ok := primitiveTuple(args[0].Type()); ok {
				return kind(et), nil
			}
			return slow.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
			v := args[0]
			if _, ok := primitiveTuple(v.Type()); ok && v.IsWhollyKnown() {
				elems := v.AsValueSlice()
				if retType.IsSetType() {
					return cty.SetVal(elems), nil
				}
				return cty.ListVal(elems), nil
			}
			return slow.Call(args)
		},
	})
}

// primitiveTuple returns the element type of t, a non-empty tuple type
// whose elements are all of that one primitive type.
func primitiveTuple(t cty.Type) (cty.Type, bool) {
	if !t.IsTupleType() {
		return cty.NilType, false
	}
	ets := t.TupleElementTypes()
	if len(ets) == 0 || !ets[0].IsPrimitiveType() {
		return cty.NilType, false
	}
	for _, et := range ets[1:] {
		if !et.Equals(ets[0]) {
			return cty.NilType, false
		}
	}
	return ets[0], true
}
