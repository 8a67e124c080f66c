package eval

import (
	"math/big"
	"net"

	"github.com/apparentlymart/go-cidr/cidr"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// The network functions are Terraform's: cidrhost, cidrnetmask,
// cidrsubnet and cidrsubnets, with the address arithmetic of
// github.com/apparentlymart/go-cidr, which Terraform uses. Unlike
// Terraform, an IPv4 address written with leading zeros (010.0.0.0/8) is
// an error, as Go's parser says, rather than read as decimal.

// parsePrefix reads a prefix in CIDR notation (argument i).
func parsePrefix(v cty.Value, i int) (*net.IPNet, error) {
	s := v.AsString()
	_, network, err := net.ParseCIDR(s)
	if err != nil {
		return nil, function.NewArgErrorf(i, "%q is not a network prefix in CIDR notation (10.0.0.0/16, fd00::/56)", s)
	}
	return network, nil
}

// wholeNumber reads argument i as a whole number.
func wholeNumber(v cty.Value, i int, what string) (*big.Int, error) {
	f := v.AsBigFloat()
	if !f.IsInt() {
		return nil, function.NewArgErrorf(i, "%s must be a whole number, not %s", what, f.Text('g', -1))
	}
	n, _ := f.Int(nil)
	return n, nil
}

// extraBits reads argument i, a number of bits to add to network's
// prefix, which must still fit in an address.
func extraBits(v cty.Value, i int, network *net.IPNet) (int, error) {
	n, err := wholeNumber(v, i, "newbits")
	if err != nil {
		return 0, err
	}
	ones, bits := network.Mask.Size()
	if n.Sign() < 0 || !n.IsInt64() || n.Int64() > int64(bits-ones) {
		return 0, function.NewArgErrorf(i, "newbits must be between 0 and %d: %s has %d bits after its /%d prefix, not %s", bits-ones, network, bits-ones, ones, n)
	}
	return int(n.Int64()), nil
}

var cidrHostFunc = function.New(&function.Spec{
	Description: "Returns the address of host number hostnum in a network prefix (counted from the end when negative).",
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String},
		{Name: "hostnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		network, err := parsePrefix(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		num, err := wholeNumber(args[1], 1, "hostnum")
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		ones, bits := network.Mask.Size()
		size := new(big.Int).Lsh(big.NewInt(1), uint(bits-ones))
		if num.Cmp(new(big.Int).Neg(size)) < 0 || num.Cmp(size) >= 0 {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "%s holds %s addresses: hostnum must be from -%s to %s, not %s", network, size, size, new(big.Int).Sub(size, big.NewInt(1)), num)
		}
		ip, err := cidr.HostBig(network, num)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(1, err)
		}
		return cty.StringVal(ip.String()), nil
	},
})

var cidrNetmaskFunc = function.New(&function.Spec{
	Description: "Returns the netmask of an IPv4 network prefix in dotted-decimal notation.",
	Params:      []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:        function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		network, err := parsePrefix(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		if network.IP.To4() == nil {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "%s is an IPv6 prefix; netmasks are written for IPv4 only (IPv6 uses the prefix length)", network)
		}
		return cty.StringVal(net.IP(network.Mask).String()), nil
	},
})

var cidrSubnetFunc = function.New(&function.Spec{
	Description: "Returns subnet number netnum of a network prefix extended by newbits bits.",
	Params: []function.Parameter{
		{Name: "prefix", Type: cty.String},
		{Name: "newbits", Type: cty.Number},
		{Name: "netnum", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		network, err := parsePrefix(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		newBits, err := extraBits(args[1], 1, network)
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		num, err := wholeNumber(args[2], 2, "netnum")
		if err != nil {
			return cty.UnknownVal(cty.String), err
		}
		count := new(big.Int).Lsh(big.NewInt(1), uint(newBits))
		if num.Sign() < 0 || num.Cmp(count) >= 0 {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(2, "%s extended by %d bits has %s subnets: netnum must be from 0 to %s, not %s", network, newBits, count, new(big.Int).Sub(count, big.NewInt(1)), num)
		}
		sub, err := cidr.SubnetBig(network, newBits, num)
		if err != nil {
			return cty.UnknownVal(cty.String), function.NewArgError(2, err)
		}
		return cty.StringVal(sub.String()), nil
	},
})

var cidrSubnetsFunc = function.New(&function.Spec{
	Description: "Returns consecutive subnets of a network prefix, one per newbits argument, each extending the prefix by that many bits.",
	Params:      []function.Parameter{{Name: "prefix", Type: cty.String}},
	VarParam:    &function.Parameter{Name: "newbits", Type: cty.Number},
	Type:        function.StaticReturnType(cty.List(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		network, err := parsePrefix(args[0], 0)
		if err != nil {
			return cty.UnknownVal(cty.List(cty.String)), err
		}
		if len(args) == 1 {
			return cty.ListValEmpty(cty.String), nil
		}
		ones, _ := network.Mask.Size()
		out := make([]cty.Value, 0, len(args)-1)
		var prev *net.IPNet
		for i, a := range args[1:] {
			newBits, err := extraBits(a, i+1, network)
			if err != nil {
				return cty.UnknownVal(cty.List(cty.String)), err
			}
			var next *net.IPNet
			if prev == nil {
				next, err = cidr.SubnetBig(network, newBits, big.NewInt(0))
				if err != nil {
					return cty.UnknownVal(cty.List(cty.String)), function.NewArgError(i+1, err)
				}
			} else {
				var wrapped bool
				next, wrapped = cidr.NextSubnet(prev, ones+newBits)
				if wrapped || !network.Contains(next.IP) {
					return cty.UnknownVal(cty.List(cty.String)), function.NewArgErrorf(i+1, "%s has no room left for a /%d after %s", network, ones+newBits, prev)
				}
			}
			out = append(out, cty.StringVal(next.String()))
			prev = next
		}
		return cty.ListVal(out), nil
	},
})
