# Written by toque's bootstrap example.
listen  = ${port}
api_key = ${api_key}
