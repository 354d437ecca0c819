// BoardIO: epoll run loop, timers, signals, sockets and files (issue 6).
