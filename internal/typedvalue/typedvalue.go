// Package typedvalue is the JSON form toque stores cty values in — in plan
// files and in the guard specs they carry — with each value's exact type,
// so a list stays a list and a map a map across a round trip.
//
// It is an encoding only: it knows nothing of plans, guards or resources.
package typedvalue

import (
	"encoding/json"
	"fmt"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Value is a cty value kept with its exact type. In JSON it is
// {"value": …, "type": …} (ctyjson's encodings of both); a missing value
// (cty.NilVal) is null.
type Value struct {
	cty.Value
}

// MarshalJSON encodes the value with its exact type. It assembles the
// object by hand: plans hold tens of thousands of values, and a second
// reflective json.Marshal per value was a fifth of a large plan's time.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.Value == cty.NilVal {
		return []byte("null"), nil
	}
	ty := v.Value.Type()
	tb, err := ctyjson.MarshalType(ty)
	if err != nil {
		return nil, err
	}
	vb, err := ctyjson.Marshal(v.Value, ty)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(vb)+len(tb)+20)
	out = append(out, `{"value":`...)
	out = append(out, vb...)
	out = append(out, `,"type":`...)
	out = append(out, tb...)
	return append(out, '}'), nil
}

// UnmarshalJSON decodes a value and its type.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		v.Value = cty.NilVal
		return nil
	}
	var raw struct {
		Value json.RawMessage `json:"value"`
		Type  json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw.Type) == 0 || len(raw.Value) == 0 {
		return fmt.Errorf("a stored value needs both \"value\" and \"type\"")
	}
	ty, err := ctyjson.UnmarshalType(raw.Type)
	if err != nil {
		return fmt.Errorf("stored value type: %w", err)
	}
	val, err := ctyjson.Unmarshal(raw.Value, ty)
	if err != nil {
		return fmt.Errorf("stored value: %w", err)
	}
	v.Value = val
	return nil
}

// Type is a cty type in ctyjson's type notation: "string",
// ["list","string"], ["object",{"a":"number"}], "dynamic".
type Type struct {
	cty.Type
}

// MarshalJSON encodes the type.
func (t Type) MarshalJSON() ([]byte, error) {
	if t.Type == cty.NilType {
		return []byte("null"), nil
	}
	return ctyjson.MarshalType(t.Type)
}

// UnmarshalJSON decodes a type.
func (t *Type) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Type = cty.NilType
		return nil
	}
	ty, err := ctyjson.UnmarshalType(b)
	if err != nil {
		return fmt.Errorf("stored type: %w", err)
	}
	t.Type = ty
	return nil
}
