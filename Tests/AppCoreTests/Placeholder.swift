import AppCore
