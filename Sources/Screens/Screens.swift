// Screens: renders the app core screen value onto the framebuffer (issue 4).
