//===----------------------------------------------------------------------===//
//
// This source file is part of the ipnd open source project
//
// Copyright (c) the ipnd authors
// Licensed under Apache License v2.0
//
// See LICENSE for license information
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

import Mustache

// The values each template reads, by name, without reflection: Mustache looks a name up with
// `Mirror` otherwise, which cost more than a page's queries (the overview spent a third of its
// time there). A name a model does not serve reads as missing, so each list below must name
// every field of its model; ConsoleUnitTests checks that it does.

extension PageFrame: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "pageTitle": pageTitle
        case "signedIn": signedIn
        case "navItems": navItems
        case "csrfToken": csrfToken
        case "flashMessage": flashMessage
        case "errorMessage": errorMessage
        case "page": page
        default: nil
        }
    }
}

extension NavItem: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "href": href
        case "label": label
        case "isCurrent": isCurrent
        default: nil
        }
    }
}

extension SelectOption: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "optionValue": optionValue
        case "optionSelected": optionSelected
        default: nil
        }
    }
}

extension OrderRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "link": link
        case "orderRef": orderRef
        case "provider": provider
        case "account": account
        case "state": state
        case "amount": amount
        case "refunded": refunded
        case "expected": expected
        case "flagList": flagList
        case "updatedAt": updatedAt
        default: nil
        }
    }
}

extension DeliveryRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "deliveryID": deliveryID
        case "deliveryTarget": deliveryTarget
        case "deliverySeq": deliverySeq
        case "deliveryType": deliveryType
        case "deliveryOrderRef": deliveryOrderRef
        case "deliveryOrderLink": deliveryOrderLink
        case "deliveryState": deliveryState
        case "deliveryAttempts": deliveryAttempts
        case "deliveryLastAttempt": deliveryLastAttempt
        case "deliveryLastAnswer": deliveryLastAnswer
        case "deliveryNextAttempt": deliveryNextAttempt
        case "deliveryRetryable": deliveryRetryable
        default: nil
        }
    }
}

extension RawRequestView: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "headerLines": headerLines
        case "bodyLines": bodyLines
        case "bodyBytes": bodyBytes
        case "bodyNotUTF8": bodyNotUTF8
        default: nil
        }
    }
}

extension ReasonCount: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "reasonLabel": reasonLabel
        case "reasonCount": reasonCount
        case "reasonLink": reasonLink
        default: nil
        }
    }
}

extension TargetRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "targetName": targetName
        case "targetLink": targetLink
        case "targetPaused": targetPaused
        case "targetPausedAt": targetPausedAt
        case "targetPausedReason": targetPausedReason
        case "targetBacklog": targetBacklog
        case "targetOldest": targetOldest
        case "targetFailed": targetFailed
        case "targetFailedLink": targetFailedLink
        default: nil
        }
    }
}

extension MessagePage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "text": text
        case "backLink": backLink
        case "backLabel": backLabel
        default: nil
        }
    }
}

extension SignInPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "signInToken": signInToken
        case "nextPath": nextPath
        default: nil
        }
    }
}

extension OverviewPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "windowStart": windowStart
        case "chart": chart
        case "verdictColumns": verdictColumns
        case "columnCount": columnCount
        case "providerRows": providerRows
        case "totalRow": totalRow
        case "rejections": rejections
        case "stateRows": stateRows
        case "orderTotal": orderTotal
        case "mismatchTotal": mismatchTotal
        case "hasMismatchOrders": hasMismatchOrders
        case "mismatchOrders": mismatchOrders
        case "mismatchMore": mismatchMore
        case "mismatchShown": mismatchShown
        case "targetRows": targetRows
        case "awaitingInquiry": awaitingInquiry
        case "oldestAwaiting": oldestAwaiting
        case "unsettledTotal": unsettledTotal
        case "reconciling": reconciling
        default: nil
        }
    }
}

extension OverviewPage.CountRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "rowLabel": rowLabel
        case "cells": cells
        case "rowTotal": rowTotal
        default: nil
        }
    }
}

extension OverviewPage.Cell: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "cellVerdict": cellVerdict
        case "cellCount": cellCount
        case "cellLink": cellLink
        default: nil
        }
    }
}

extension OverviewPage.StateCount: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "stateName": stateName
        case "stateCount": stateCount
        case "stateLink": stateLink
        default: nil
        }
    }
}

extension HourlyChart: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "width": width
        case "height": height
        case "caption": caption
        case "gridLines": gridLines
        case "bars": bars
        case "hourLabels": hourLabels
        case "legend": legend
        default: nil
        }
    }
}

extension HourlyChart.GridLine: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "x1": x1
        case "x2": x2
        case "y": y
        case "label": label
        case "labelX": labelX
        case "labelY": labelY
        default: nil
        }
    }
}

extension HourlyChart.Bar: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "x": x
        case "top": top
        case "width": width
        case "fullHeight": fullHeight
        case "summary": summary
        case "segments": segments
        default: nil
        }
    }
}

extension HourlyChart.Segment: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "verdict": verdict
        case "x": x
        case "y": y
        case "width": width
        case "height": height
        default: nil
        }
    }
}

extension HourlyChart.HourLabel: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "x": x
        case "y": y
        case "label": label
        default: nil
        }
    }
}

extension OrdersPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "providerOptions": providerOptions
        case "accountFilter": accountFilter
        case "stateOptions": stateOptions
        case "sinceFilter": sinceFilter
        case "searchText": searchText
        case "searching": searching
        case "orderRows": orderRows
        case "firstPageLink": firstPageLink
        case "nextPageLink": nextPageLink
        default: nil
        }
    }
}

extension OrderPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "orderRef": orderRef
        case "provider": provider
        case "account": account
        case "state": state
        case "amount": amount
        case "refunded": refunded
        case "expected": expected
        case "flagList": flagList
        case "providerTxnID": providerTxnID
        case "createdAt": createdAt
        case "updatedAt": updatedAt
        case "expectationAction": expectationAction
        case "currencyGuess": currencyGuess
        case "rawShown": rawShown
        case "rawToggleLink": rawToggleLink
        case "timeline": timeline
        case "deliveryRows": deliveryRows
        case "returnPath": returnPath
        case "asked": asked
        case "askAction": askAction
        case "nextInquiryAt": nextInquiryAt
        case "inquiryRows": inquiryRows
        default: nil
        }
    }
}

extension InquiryRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "inquiryID": inquiryID
        case "inquiryAskedAt": inquiryAskedAt
        case "inquiryTrigger": inquiryTrigger
        case "inquiryOutcome": inquiryOutcome
        case "inquiryHTTP": inquiryHTTP
        case "inquiryStatus": inquiryStatus
        case "inquiryNotification": inquiryNotification
        case "inquiryNotificationLink": inquiryNotificationLink
        case "inquiryError": inquiryError
        case "inquiryMilliseconds": inquiryMilliseconds
        default: nil
        }
    }
}

extension TimelineEntry: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "entryKind": entryKind
        case "entryTime": entryTime
        case "tlNotification": tlNotification
        case "tlTransition": tlTransition
        case "tlEvent": tlEvent
        default: nil
        }
    }
}

extension TimelineEntry.NotificationItem: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "noteID": noteID
        case "noteLink": noteLink
        case "noteVerdict": noteVerdict
        case "noteReason": noteReason
        case "noteStatus": noteStatus
        case "noteKind": noteKind
        case "noteAmount": noteAmount
        case "noteDetail": noteDetail
        case "noteRaw": noteRaw
        default: nil
        }
    }
}

extension TimelineEntry.TransitionItem: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "fromState": fromState
        case "toState": toState
        case "causeID": causeID
        case "causeLink": causeLink
        default: nil
        }
    }
}

extension TimelineEntry.EventItem: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "eventSeq": eventSeq
        case "eventType": eventType
        case "eventFlag": eventFlag
        case "eventID": eventID
        default: nil
        }
    }
}

extension NotificationsPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "providerOptions": providerOptions
        case "accountFilter": accountFilter
        case "verdictOptions": verdictOptions
        case "sinceFilter": sinceFilter
        case "rejectionWindow": rejectionWindow
        case "rejections": rejections
        case "notificationRows": notificationRows
        case "firstPageLink": firstPageLink
        case "nextPageLink": nextPageLink
        default: nil
        }
    }
}

extension NotificationRow: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "rowID": rowID
        case "rowLink": rowLink
        case "rowReceived": rowReceived
        case "rowProvider": rowProvider
        case "rowAccount": rowAccount
        case "rowOrderRef": rowOrderRef
        case "rowOrderLink": rowOrderLink
        case "rowVerdict": rowVerdict
        case "rowReason": rowReason
        case "rowStatus": rowStatus
        case "rowClient": rowClient
        default: nil
        }
    }
}

extension NotificationPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "noteID": noteID
        case "noteReceived": noteReceived
        case "noteProvider": noteProvider
        case "noteAccount": noteAccount
        case "noteOrderRef": noteOrderRef
        case "noteOrderLink": noteOrderLink
        case "noteVerdict": noteVerdict
        case "noteReason": noteReason
        case "noteReasonDetail": noteReasonDetail
        case "noteKind": noteKind
        case "noteStatus": noteStatus
        case "noteAmount": noteAmount
        case "noteTxnID": noteTxnID
        case "noteDedupKey": noteDedupKey
        case "noteClient": noteClient
        case "noteReverifiedFrom": noteReverifiedFrom
        case "noteReverifiedLink": noteReverifiedLink
        case "noteDetail": noteDetail
        case "noteRaw": noteRaw
        default: nil
        }
    }
}

extension DeliveriesPage: MustacheParent {
    func child(named name: String) -> Any? {
        switch name {
        case "targetRows": targetRows
        case "targetOptions": targetOptions
        case "stateOptions": stateOptions
        case "deliveryRows": deliveryRows
        case "returnPath": returnPath
        case "firstPageLink": firstPageLink
        case "nextPageLink": nextPageLink
        default: nil
        }
    }
}
