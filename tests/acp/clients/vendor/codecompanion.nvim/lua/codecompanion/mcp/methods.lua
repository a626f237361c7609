return {
  CancelledNotification = "notifications/cancelled",
  InitializedNotification = "notifications/initialized",
  RootsListChangedNotification = "notifications/roots/list_changed",
}
