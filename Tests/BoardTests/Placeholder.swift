import BoardIO
