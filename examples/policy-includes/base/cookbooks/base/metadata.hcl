name        = "base"
version     = "0.1.0"
description = "Settings every host gets."
